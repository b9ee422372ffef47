"""The parts of the fusion probe: the byte accounting, the plan, the chain in torch, the comparison, one device's run."""
