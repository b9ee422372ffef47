"""The gemm probe's parts: dtypes, the test-case registry, parameters, the roofline, explanations, the sweep."""
