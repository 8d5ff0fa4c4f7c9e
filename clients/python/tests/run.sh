#!/bin/sh
# Runs the Python client's tests with the interpreter given (CTest passes Debian's /usr/bin/python3:
# the python3 on PATH may be another one, without the packages scripts/setup installs). Exits 77,
# CTest's SKIP_RETURN_CODE, when that interpreter has no pytest.
python=${1:?usage: run.sh PYTHON}
here=$(cd "$(dirname "$0")" && pwd)
if ! "$python" -c 'import pytest' 2>/dev/null; then
  echo "SKIP: $python has no pytest: the Python client is not tested (apt-get install python3-pytest; scripts/setup installs it)"
  exit 77
fi
PYTHONDONTWRITEBYTECODE=1 exec "$python" -m pytest -q -rs -p no:cacheprovider "$here"
