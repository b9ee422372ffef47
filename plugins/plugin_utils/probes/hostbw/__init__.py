"""hostbw: host-to-device and device-to-host copy bandwidth, pinned and pageable."""
