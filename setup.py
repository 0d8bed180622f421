"""The build's metadata folder (egg-info) goes to build/, not plugins/: an editable install puts plugins/
on sys.path, where a second copy of the package's metadata would register its Airflow plugin and
provider twice (Airflow then reports the plugin as an import error). Everything else is pyproject.toml."""

import os

from setuptools import setup

os.makedirs("build", exist_ok=True)
setup(options={"egg_info": {"egg_base": "build"}})
