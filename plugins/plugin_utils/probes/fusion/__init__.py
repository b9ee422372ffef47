"""fusion: an elementwise chain as 4 eager kernels and as one compiled kernel, with the bytes each must move.

Its achieved bandwidth is set against the copy plateau membw measured on the same device in the same run: that is
derived on the controller from this run's stored membw result. A parameter the user gave always wins."""
