# Pasarela. `make run` brings the app up; `make test` installs what the tests
# need and runs them. Both work on a fresh Debian machine with Go.

GO         ?= go
BIN        := bin/pasarela
# Tests share one private PostgreSQL cluster for the run (see db/dbtest).
TEST_PGDIR ?= $(or $(TMPDIR),/tmp)/pasarela-test-$(shell id -u)
# Front-end libraries, pinned; `make vendor` fetches them from the npm registry.
HTMX_VERSION := 2.0.8
HTMX_SSE_VERSION := 2.2.4
UPLOT_VERSION := 1.6.32
SORTABLE_VERSION := 1.15.7
# axe-core checks pages for accessibility in the browser tests only; it is never served.
AXE_VERSION  := 4.14.1

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT  := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: build run test bench vet deps-postgres deps-chromium stop-test-db vendor clean

build:
	$(GO) build -o $(BIN) .

run: deps-postgres build
	./$(BIN) dev

test: deps-postgres deps-chromium vet
	@PASARELA_TEST_PGDIR=$(TEST_PGDIR) $(GO) test -count=1 ./...; rc=$$?; \
	  $(MAKE) --no-print-directory stop-test-db; exit $$rc

# Each benchmark runs a fixed workload once and reports its figures as metrics. -p 1: no
# other package is built or run while a benchmark measures.
bench: deps-postgres
	@PASARELA_TEST_PGDIR=$(TEST_PGDIR) $(GO) test -p 1 -run '^$$' -bench . -benchtime 1x -timeout 30m ./...; rc=$$?; \
	  $(MAKE) --no-print-directory stop-test-db; exit $$rc

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }

# PostgreSQL server binaries (initdb, postgres): on PATH or under
# /usr/lib/postgresql/*/bin; else Debian's package when apt-get exists.
deps-postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing PostgreSQL from Debian (package postgresql)..."; \
	  $(APT) update -qq && $(APT) install -y -qq postgresql >/dev/null; \
	else echo "PostgreSQL server binaries not found and no apt-get: install PostgreSQL or set DATABASE_URL"; exit 1; fi

deps-chromium:
	@if command -v chromium >/dev/null 2>&1 || [ -n "$$CHROMIUM" ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing Chromium from Debian (package chromium) for the browser tests..."; \
	  $(APT) update -qq && $(APT) install -y -qq chromium >/dev/null; \
	else echo "Chromium not found and no apt-get: install it or set CHROMIUM=/path/to/chrome"; exit 1; fi

stop-test-db:
	@for d in $(TEST_PGDIR) $(TEST_PGDIR)-durable; do \
	  if [ -f $$d/data/postmaster.pid ]; then kill -INT $$(head -1 $$d/data/postmaster.pid) 2>/dev/null || true; fi; \
	done

# Re-fetch the vendored front-end files from the npm registry at the pinned versions.
vendor:
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent htmx.org@$(HTMX_VERSION) >/dev/null && \
	  tar xzf htmx.org-$(HTMX_VERSION).tgz && \
	  cp package/dist/htmx.min.js package/LICENSE $(CURDIR)/static/vendor/htmx/ && rm -rf $$tmp
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent htmx-ext-sse@$(HTMX_SSE_VERSION) >/dev/null && \
	  tar xzf htmx-ext-sse-$(HTMX_SSE_VERSION).tgz && mkdir -p $(CURDIR)/static/vendor/htmx-ext-sse && \
	  cp package/dist/sse.min.js package/LICENSE $(CURDIR)/static/vendor/htmx-ext-sse/ && rm -rf $$tmp
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent uplot@$(UPLOT_VERSION) >/dev/null && \
	  tar xzf uplot-$(UPLOT_VERSION).tgz && mkdir -p $(CURDIR)/static/vendor/uplot && \
	  cp package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE $(CURDIR)/static/vendor/uplot/ && rm -rf $$tmp
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent sortablejs@$(SORTABLE_VERSION) >/dev/null && \
	  tar xzf sortablejs-$(SORTABLE_VERSION).tgz && mkdir -p $(CURDIR)/static/vendor/sortable && \
	  cp package/Sortable.min.js package/LICENSE $(CURDIR)/static/vendor/sortable/ && rm -rf $$tmp
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null && \
	  tar xzf axe-core-$(AXE_VERSION).tgz && mkdir -p $(CURDIR)/server/testdata/axe && \
	  cp package/axe.min.js package/LICENSE $(CURDIR)/server/testdata/axe/ && rm -rf $$tmp
	@echo "static/vendor updated: htmx $(HTMX_VERSION), htmx-ext-sse $(HTMX_SSE_VERSION), uPlot $(UPLOT_VERSION), SortableJS $(SORTABLE_VERSION); server/testdata/axe: axe-core $(AXE_VERSION)"

clean:
	rm -rf bin
