"""Reading the host itself, shared by the probes: the roots the system is read from, small /proc and /sys readers, and
a fresh Python process run as a child. Standard library only."""
