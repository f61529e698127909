#!/usr/bin/python3
"""Checks that ctk's layers hold: a file under src/<folder>/ or include/ctk/ includes only public headers
of its own layer or the layers below it, and private headers ("<folder>/x.h" under src/) of its own
folder, or of another folder where an exception below names why. Exits 1 naming each offending
include; `--self-test` plants violations in a scratch tree and checks that each is caught.

The layers (docs/architecture.md): core < kernels < graph < learners, layers, io, formats < distributed
< train < c. Public headers live in include/ctk/<layer>/, with an umbrella include/ctk/<layer>.h per layer
and include/ctk/ctk.h over them all. Inside the kernel layer, the CPU backend (src/kernels/cpu) and the
CUDA backend (src/kernels/cuda) never include each other's private headers: neither links the other.
"""

import argparse
import os
import re
import sys
import tempfile

# Each folder of src/ and the folders whose headers it may use (its own always; the rest by closure).
BELOW = {
    "core": [],
    "kernels": ["core"],
    "graph": ["kernels"],
    "learners": ["graph"],
    "layers": ["graph"],
    "io": ["graph"],
    "formats": ["graph"],
    "distributed": ["learners", "formats"],
    "train": ["learners", "layers", "io", "formats", "distributed"],
    "c": ["train"],
}

# Private headers another folder may include, and why. Anything else across folders is an error.
PRIVATE_EXCEPTIONS = {
    ("kernels", "core/cuda/"): "the CUDA backend shares the core's CUDA runtime helpers (error checks, "
                               "device copies, capture pools), which need CUDA's headers",
    ("kernels", "core/strided_loop.h"): "the CPU kernels' strided loop template lives beside the tensor copy",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(folder):
    seen, todo = set(), [folder]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(BELOW[f])
    return seen


def public_layer(header):
    """The layer of a public header: its folder under ctk/ (ctk/train/trainer.h), or for a layer's
    umbrella (ctk/train.h) its name; None for anything else (a header directly in include/ctk/)."""
    parts = header.replace(os.sep, "/").split("/")
    if len(parts) >= 3 and parts[-3] == "ctk" and parts[-2] in BELOW:
        return parts[-2]
    if len(parts) >= 2 and parts[-2] == "ctk" and os.path.splitext(parts[-1])[0] in BELOW:
        return os.path.splitext(parts[-1])[0]
    return None


# The backends of the kernel layer, which must not include each other's private headers.
BACKENDS = ("kernels/cpu/", "kernels/cuda/")


def check(root):
    """The offending includes under root, one message each."""
    problems = []
    files = []
    for top in ("src", os.path.join("include", "ctk")):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".h", ".cpp", ".cu", ".cuh")):
                    files.append(os.path.join(dirpath, n))
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)
        if parts[0] == "include":
            if parts[-1] == "ctk.h":
                continue
            layer = public_layer("/".join(parts[1:]))
            if layer is None:
                problems.append(f"{rel}: a public header outside the layer folders: move it to "
                                "include/ctk/<layer>/")
                continue
            folder = None
        else:
            if len(parts) < 3 or parts[1] not in BELOW:
                continue  # src/CMakeLists.txt and the like
            folder = layer = parts[1]
        allowed = closure(layer)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            head = inc.split("/")[0]
            if head == "ctk":
                if inc == "ctk/ctk.h":
                    problems.append(f"{rel}:{line}: includes the umbrella ctk/ctk.h (include what you use)")
                    continue
                target = public_layer(inc)
                if target is not None and target not in allowed:
                    problems.append(f"{rel}:{line}: includes {inc} of the {target} layer, above {layer}")
            elif head in BELOW:
                rel_unix = rel.replace(os.sep, "/")
                mine = next((b for b in BACKENDS if rel_unix.startswith("src/" + b)), None)
                theirs = next((b for b in BACKENDS if inc.startswith(b)), None)
                if mine and theirs and mine != theirs:
                    problems.append(f"{rel}:{line}: includes {inc}: the CPU and CUDA backends never "
                                    "include each other")
                elif folder is None:
                    problems.append(f"{rel}:{line}: a public header includes the private {inc}")
                elif head != folder and not any(
                        f == folder and inc.startswith(prefix) for (f, prefix) in PRIVATE_EXCEPTIONS):
                    problems.append(f"{rel}:{line}: includes {inc}, private to src/{head}")
                elif head != folder and head not in allowed:
                    problems.append(f"{rel}:{line}: includes {inc} of src/{head}, above {layer}")
    return problems


def self_test():
    """Plants one violation of each kind in a scratch tree and checks each is reported."""
    planted = {
        "src/core/up.cpp": '#include "ctk/graph/function.h"\n',            # core reaching up to the graph
        "src/io/private.cpp": '#include "graph/executor.h"\n',        # another folder's private header
        "src/kernels/up.cpp": '#include "graph/ops/ops_common.h"\n',        # up and private
        "include/ctk/core/tensor.h": '#include "ctk/train.h"\n',           # a public header reaching up
        "include/ctk/graph/value.h": '#include "graph/graph_internal.h"\n',  # a public header, private include
        "include/ctk/io/reader.h": '#include "ctk/train/trainer.h"\n',  # a layer folder reaching up
        "src/train/fine.cpp": '#include "ctk/formats/model.h"\n#include "train/step_graph.h"\n',  # allowed
        "src/graph/ops/fine.cpp": '#include "graph/graph_internal.h"\n',    # an allowed exception
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in planted.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        problems = check(root)
    expected = ["src/core/up.cpp", "src/io/private.cpp", "src/kernels/up.cpp", "include/ctk/core/tensor.h",
                "include/ctk/graph/value.h", "include/ctk/io/reader.h"]
    ok = True
    for rel in expected:
        if not any(p.startswith(rel + ":") for p in problems):
            print(f"self-test: the violation planted in {rel} was not caught", file=sys.stderr)
            ok = False
    for p in problems:
        if p.startswith(("src/train/fine.cpp", "src/graph/ops/fine.cpp")):
            print(f"self-test: an allowed include was refused: {p}", file=sys.stderr)
            ok = False
    print("self-test: " + ("every planted violation caught" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = check(os.path.abspath(args.root))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} include(s) break the layers (scripts/check_layers.py)", file=sys.stderr)
        return 1
    print("layers: every include points down or stays in its folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
