"""The command `pfnn-edit EDIT.json --out OUT.bvh [--report R.json]`: build and write the edit, print
the seam report; exit status EXIT_BAD_INPUT (nothing written) on a bad edit list."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pfnn_core import files
from pfnn_core.editing.build import export
from pfnn_core.editing.document import EditError, load_edit_list

EXIT_BAD_INPUT = 2
EXIT_WRITE_FAILED = 1  # an output could not be written (the message says which and why)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pfnn-edit", description="Splice BVH clips at matching phase (edit list "
                                     "JSON) and write the sequence as BVH with a seam report.")
    parser.add_argument("edit_list", help="edit list JSON")
    parser.add_argument("--out", required=True, help="output .bvh or .bvh.gz")
    parser.add_argument("--report", help="also write the report as JSON here")
    args = parser.parse_args(argv)
    try:
        result = export(load_edit_list(args.edit_list), args.out)
        print("\n".join(result.report_lines()))
        if args.report:
            Path(args.report).parent.mkdir(parents=True, exist_ok=True)
            files.write_text(args.report, json.dumps(result.report_dict(), indent=2) + "\n")
    except EditError as error:
        print(f"pfnn-edit: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:  # a full disk, a read-only folder: the file is whole or as it was
        print(f"pfnn-edit: {files.explain(error)}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
