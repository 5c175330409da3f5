#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compressed-size histogram of the untar dataset, for bench/speed/run.sh.

usage: bench/sizes.py [--tar TAR] [--mode files|tar] [--page 4096|16384]
                      [--bucket N] [--out CSV]

Compresses 4 KiB pages (--page 16384: 16 KiB pages, as a kernel with 16 KiB
pages hands zram, bench/data/sizes-lz4-16k.csv) of the quick dataset (bench/dataset.sh quick) with
LZ4 (the `lz4` PyPI package, installed into $AFMALLOC_VENV if missing; its
block compressor at the default acceleration is what zram's lz4 backend
runs) and writes a histogram of the compressed sizes:

  --mode files (default): every regular file of the tar cut into pages,
      the last one zero-padded, as the untar workload's page cache pages
      reach zram (file data only; ext4 metadata is not modelled);
  --mode tar: every page-sized block of the tar stream itself.

All-zero pages are skipped (zram stores them as same-filled pages, without
the allocator) and sizes are capped at PAGE_SIZE (zram stores a page that
does not compress whole). Output CSV (default bench/data/sizes-lz4.csv):
'#' comment lines saying where it comes from, then size_lo,size_hi,count
with one row per non-empty bucket of --bucket bytes (default 16, zsmalloc's
size-class step with 4 KiB pages; 64 with 16 KiB pages): sizes size_lo..size_hi inclusive.
afm_speed.ko draws object sizes from it (bucket by count, then a uniform
size within the bucket).
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tarfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = 4096


def ensure_lz4():
    """Import lz4.block, installing lz4 into the project venv first if needed."""
    venv = os.environ.get("AFMALLOC_VENV",
                          os.path.join(os.path.expanduser("~"), ".cache/afmalloc/venv"))
    vpy = os.path.join(venv, "bin", "python3")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        # Re-run under the venv's interpreter, where lz4 lives.
        if not os.access(vpy, os.X_OK):
            sys.exit(f"sizes: error: no venv at {venv} (run scripts/setup.sh)")
        os.execv(vpy, [vpy] + sys.argv)
    try:
        import lz4.block  # noqa: F401
    except ImportError:
        print("[afmalloc] installing lz4 into the venv", file=sys.stderr)
        subprocess.run([vpy, "-m", "pip", "install", "-q", "lz4"], check=True)
    import lz4.block
    return lz4.block


def pages_of_files(tar_path, page_size):
    with tarfile.open(tar_path) as tf:
        for m in tf:
            if not m.isreg() or m.size == 0:
                continue
            data = tf.extractfile(m).read()
            for off in range(0, len(data), page_size):
                page = data[off:off + page_size]
                yield page + bytes(page_size - len(page)) if len(page) < page_size else page


def pages_of_tar(tar_path, page_size):
    with open(tar_path, "rb") as f:
        while True:
            page = f.read(page_size)
            if not page:
                return
            yield page + bytes(page_size - len(page)) if len(page) < page_size else page


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tar", help="dataset tar (default: bench/dataset.sh quick)")
    ap.add_argument("--mode", choices=("files", "tar"), default="files")
    ap.add_argument("--page", type=int, default=PAGE)
    ap.add_argument("--bucket", type=int)
    ap.add_argument("--out")
    args = ap.parse_args()
    page_size = args.page
    if page_size not in (4096, 16384):
        sys.exit("sizes: error: --page must be 4096 or 16384 (the page sizes afmalloc supports)")
    if args.bucket is None:
        args.bucket = page_size // 256
    if args.bucket < 1 or page_size % args.bucket:
        sys.exit(f"sizes: error: --bucket must divide {page_size}")
    if args.out is None:
        suffix = "" if page_size == PAGE else f"-{page_size // 1024}k"
        args.out = os.path.join(TOP, "bench", "data", f"sizes-lz4{suffix}.csv")
    block = ensure_lz4()
    tar_path = args.tar or subprocess.run([os.path.join(TOP, "bench", "dataset.sh"), "quick"],
                                          check=True, capture_output=True,
                                          text=True).stdout.strip()
    h = hashlib.sha256()
    with open(tar_path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    zero = bytes(page_size)
    counts = [0] * (page_size // args.bucket)
    pages = zeros = capped = total = 0
    gen = pages_of_files if args.mode == "files" else pages_of_tar
    for page in gen(tar_path, page_size):
        pages += 1
        if page == zero:
            zeros += 1
            continue
        size = len(block.compress(page, mode="default", store_size=False))
        if size >= page_size:
            size, capped = page_size, capped + 1
        total += size
        counts[(size - 1) // args.bucket] += 1
    stored = pages - zeros
    if not stored:
        sys.exit(f"sizes: error: no non-zero page in {tar_path}")
    import lz4
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        page_opt = "" if page_size == PAGE else f" --page {page_size}"
        f.write(f"# bench/sizes.py --mode {args.mode}{page_opt} --bucket {args.bucket}: "
                f"{os.path.basename(tar_path)} sha256 {h.hexdigest()[:16]}, "
                f"lz4 {lz4.__version__} block (default acceleration)\n")
        f.write(f"# pages {pages}, all-zero skipped {zeros}, stored {stored}, "
                f"capped at {page_size} {capped}, mean size {total / stored:.1f}\n")
        f.write("size_lo,size_hi,count\n")
        for i, n in enumerate(counts):
            if n:
                f.write(f"{i * args.bucket + 1},{(i + 1) * args.bucket},{n}\n")
    os.replace(args.out + ".tmp", args.out)
    print(f"sizes: {stored} pages ({zeros} all-zero skipped, {capped} capped), "
          f"mean {total / stored:.1f} B -> {args.out}")


if __name__ == "__main__":
    main()
