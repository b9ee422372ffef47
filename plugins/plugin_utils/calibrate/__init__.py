"""Calibrate a SKU's baseline from a stored run of healthy hosts (playbooks/calibrate.yml, docs/judge.md "Calibrating a
baseline"): the median over hosts of each headline metric, refused with too few hosts, a spread above the metric's
drift tolerance or a median below a datasheet floor. Pure Python: no Ansible, no torch."""
