"""The benchmarks, a package run from the checkout: ``python -m bench.run_all`` (``make bench``), bench/README.md."""
