"""membw: device memory bandwidth, a copy swept over sizes to its plateau."""
