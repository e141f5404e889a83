"""``python -m pyomo_lap.cli``: the command group :func:`pyomo_lap.cli.main`."""
from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
