"""p2p: every ordered pair of GPUs, one-way and two-way copy bandwidth, with the link class between them."""
