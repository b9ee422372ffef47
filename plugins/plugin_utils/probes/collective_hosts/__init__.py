"""collective_hosts: the all-reduce across the GPUs of several hosts (a role and playbook of its own)."""
