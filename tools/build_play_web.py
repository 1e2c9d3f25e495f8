"""Build the player's page (services/play/static/play.js) from web/src with esbuild, and
the TableService client it uses from protos/ with protoc-gen-es (web/gen/).

    python3 tools/build_play_web.py            # npm ci if need be, generate, bundle
    python3 tools/build_play_web.py --check    # exit 1 when the vendored files are stale

npm is needed here only: the built bundle and the generated client are committed, and
the suite serves the bundle as it is (nothing is fetched at run time). The page's HTML
and style are written by hand in services/play/static/.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
PROTOS = ROOT / "protos"
GENERATED = WEB / "gen"
BUNDLE = ROOT / "services" / "play" / "static" / "play.js"
PROTO_FILES = ("ddz/v1/table.proto", "ddz/v1/envelope.proto", "ddz/v1/hand_events.proto",
               "ddz/v1/rules.proto", "ddz/v1/errors.proto")  # fmt: skip


def npm_ci() -> None:
    if not (WEB / "node_modules" / ".bin" / "esbuild").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True)


def generate(out: Path) -> None:
    """The TableService client and its messages, as protoc-gen-es writes them."""
    import grpc_tools

    includes = Path(grpc_tools.__file__).parent / "_proto"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTOS}", f"-I{includes}",
         f"--plugin=protoc-gen-es={WEB / 'node_modules' / '.bin' / 'protoc-gen-es'}",
         f"--es_out={out}", "--es_opt=target=js+dts,import_extension=js", *PROTO_FILES],
        check=True, cwd=ROOT,
    )  # fmt: skip


def bundle(generated: Path, out: Path) -> None:
    """One minified script for the page (its sources import the generated client)."""
    esbuild = WEB / "node_modules" / ".bin" / "esbuild"
    subprocess.run(
        [str(esbuild), str(WEB / "src" / "play.js"), "--bundle", "--minify", "--format=iife",
         "--target=es2020", "--legal-comments=none", f"--alias:@gen={generated}",
         f"--outfile={out}", "--log-level=warning"],
        check=True, cwd=WEB,
    )  # fmt: skip


def same_tree(one: Path, other: Path) -> bool:
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    others = sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file())
    return files == others and all((one / f).read_bytes() == (other / f).read_bytes()
                                   for f in files)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    npm_ci()
    if not args.check:
        shutil.rmtree(GENERATED, ignore_errors=True)
        generate(GENERATED)
        bundle(GENERATED, BUNDLE)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generated, built = Path(tmp) / "gen", Path(tmp) / "play.js"
        generate(generated)
        bundle(GENERATED, built)
        stale = [str(p.relative_to(ROOT)) for p, fresh in (
            (GENERATED, same_tree(generated, GENERATED)),
            (BUNDLE, BUNDLE.exists() and built.read_bytes() == BUNDLE.read_bytes()),
        ) if not fresh]  # fmt: skip
    if stale:
        print(f"stale: {', '.join(stale)}; run python3 tools/build_play_web.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
