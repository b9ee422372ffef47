# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where results land on the controller when nothing says: results/ in the directory ansible-playbook runs from.

Defined once here. The YAML that Ansible reads without running Python (the roles' defaults and argument specs, the
modules' documentation) has to state it again: tests/unit/test_contract_owners.py pins each copy to this one."""
from __future__ import annotations

DEFAULT_RESULTS_DIR = "results"
