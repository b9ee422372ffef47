# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run index (docs/history.md): every judged run of a results directory in SQLite, rows derived from the files the
report stores with each run. Pure: the standard library and the store; no Ansible."""
