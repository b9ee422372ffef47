# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a module whose work is all in its action plugin on the controller does if it is run on a host: it checks its
arguments (so that the spec stays the module's) and fails, saying where it runs."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def refuse_on_host(name, argument_spec):
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    module.fail_json(msg="gpufleet.validation.%s runs in its action plugin on the controller; "
                         "it cannot run as a module on a host" % name)
