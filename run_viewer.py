"""Start the PFNN viewer (same as the `pfnn-viewer` command); see `python run_viewer.py --help`."""
import sys

if "--headless" in sys.argv:
    from app.cli import use_headless_gl

    use_headless_gl()

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
