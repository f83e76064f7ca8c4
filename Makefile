.PHONY: run test lint
run:
	./scripts/run
test:
	./scripts/test
lint:
	.venv/bin/ruff check .
