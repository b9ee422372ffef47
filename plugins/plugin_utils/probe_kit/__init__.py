"""The probe kit: what the probe packages (plugin_utils/probes/<name>/) are built with and found by (kit.py is the one
module a package imports from the core)."""
