"""The precision probe's parts: the safetensors reader, the checkpoint, tensor selection, statistics, formats, explanations."""
