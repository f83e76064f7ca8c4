.PHONY: run test lint bench
run:
	./scripts/run
test:
	./scripts/test
lint:
	.venv/bin/ruff check .
# every benchmark of issue 14 in one table (docs/benchmarks.md); make bench ARGS="--scale 10"
bench:
	./scripts/bench $(ARGS)
