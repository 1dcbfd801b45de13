#!/usr/bin/env bash
# Prints the README's code block tagged NAME (its fence reads ```sh NAME or ```sql NAME), so
# that tests run the README's commands as written. Fails if there is no such block, or two.
#   tests/readme_block.sh NAME
set -euo pipefail
readme=$(cd "$(dirname "$0")/.." && pwd)/README.md
n=$(grep -cE "^\`\`\`[a-z]+ $1\$" "$readme" || true)
[ "$n" = 1 ] || { echo "README.md has $n blocks tagged $1, not 1" >&2; exit 1; }
awk -v open="$1" '
  found && /^```/ { exit }
  found { print }
  $0 ~ "^```[a-z]+ " open "$" { found = 1 }
' "$readme"
