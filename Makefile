# SPDX-License-Identifier: GPL-2.0-only
#
# afmalloc user-facing targets. kbuild itself reads ./Kbuild, both in the
# kernel tree (overlaid as mm/afmalloc/) and for the out-of-tree module.
#
#   make check     set up, KUnit on UML, in-VM integration tests (CI runs this)
#   make demo      set up, build, boot, untar/remove benchmark, print the table
#   make bench     the benchmark with options: DATASET=quick|full ROUNDS=N
#                  ALLOC=zsmalloc,... COMP=lz4|zstd OUT=dir BOOT_ARGS=...
#   make module    afmalloc.ko against KDIR (default: the running kernel)
#   make vm-test-stock  zswap on afmalloc.ko in the unmodified Debian 6.12 kernel
#
# Caches live in $(AFMALLOC_CACHE) (default ~/.cache/afmalloc).

SHELL := /bin/bash
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
KDIR ?= /lib/modules/$(shell uname -r)/build
DATASET ?= quick
ROUNDS ?= 1
ALLOC ?= zsmalloc,zsmalloc+compact,afmalloc/slab
COMP ?= lz4
OUT ?=
BOOT_ARGS ?=

.PHONY: all help setup source tree kunit guest guest-debug vm-test vm-test-zswap \
	vm-test-stock check demo bench bench-zswap module module-clean checkpatch

all: help

help:
	@sed -n '3,14p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

setup:
	$(TOP)/scripts/setup.sh

source:
	$(TOP)/scripts/kernel-source.sh

tree:
	$(TOP)/scripts/prepare-tree.sh

kunit: setup
	$(TOP)/scripts/kunit.sh

guest: setup
	$(TOP)/scripts/build-guest.sh

guest-debug: setup
	$(TOP)/scripts/build-guest.sh --debug

vm-test: guest
	$(TOP)/scripts/vm-run.sh --memory 2G --timeout 1200 --append slab_nomerge \
		$(TOP)/tests/vm/zram-integrity.sh --dataset "$$($(TOP)/bench/dataset.sh quick)"
	$(TOP)/scripts/vm-run.sh --memory 2G --timeout 1800 --append slab_nomerge \
		$(TOP)/tests/vm/zram-alloc.sh --dataset "$$($(TOP)/bench/dataset.sh quick)"

# zswap on afmalloc built into the project's kernel.
vm-test-zswap: guest
	$(TOP)/tests/vm/zswap-stock.sh --own-kernel

# zswap on afmalloc.ko built against Debian's linux-headers, in Debian's kernel.
vm-test-stock: setup
	$(TOP)/tests/vm/zswap-stock.sh

check: setup kunit vm-test vm-test-zswap vm-test-stock
	@echo "make check: all passed"

demo: setup
	$(TOP)/bench/run.sh --dataset quick --rounds 1 --alloc $(ALLOC)

bench: setup
	$(TOP)/bench/run.sh --dataset $(DATASET) --rounds $(ROUNDS) --alloc $(ALLOC) \
		--comp $(COMP) $(if $(OUT),--out $(OUT)) $(if $(BOOT_ARGS),--append "$(BOOT_ARGS)")

# zswap effective compression (Zswapped/Zswap) of afmalloc and zsmalloc on
# the same workload in one boot of Debian's kernel, recorded for the README.
bench-zswap: setup
	mkdir -p $(or $(OUT),$(TOP)/bench/results/zswap-stock)
	set -o pipefail; $(TOP)/tests/vm/zswap-stock.sh 2>&1 | \
		tee $(or $(OUT),$(TOP)/bench/results/zswap-stock)/zswap.log

module:
	@test -d $(KDIR) || { echo "error: no kernel build dir $(KDIR); install linux-headers-$$(uname -r) or set KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) CONFIG_AFMALLOC=m modules

module-clean:
	$(MAKE) -C $(KDIR) M=$(TOP) clean

checkpatch: tree
	cd "$$($(TOP)/scripts/prepare-tree.sh)" && \
	for f in $$(cd $(TOP) && git ls-files '*.c' '*.h'); do \
		./scripts/checkpatch.pl --strict --no-tree --terse -f $(TOP)/$$f || exit 1; done
	cd "$$($(TOP)/scripts/prepare-tree.sh)" && for p in $(TOP)/patches/*.patch; do \
		[ -e "$$p" ] || continue; ./scripts/checkpatch.pl --strict --terse --ignore FILE_PATH_CHANGES $$p || exit 1; done
