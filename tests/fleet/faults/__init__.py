"""Fault injection for the fault tests (tests/integration/test_faults_*.py): misbehaving interpreters for one host of a
test fleet (faulty_python), and running the real playbook against a fleet and reading what it left (runs)."""
