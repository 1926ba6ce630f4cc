import sys

from app.ab.render import main

sys.exit(main())
