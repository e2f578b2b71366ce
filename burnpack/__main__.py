"""``python -m burnpack`` runs the command line (Ctrl-C while it loads: exit 130, no traceback)."""

try:
    from .cli.main import main
except KeyboardInterrupt:
    import sys

    print("burnpack: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
