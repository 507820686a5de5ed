"""What pyproject.toml cannot say: the repository's top-level ``models/`` folder (the shipped
policies and their cards) goes into the package as ``rummy500_env/models/``, so an installed
wheel carries them and ``PolicyAgent.load("standard")`` finds them. Everything else is in
pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["rummy500_env", "rummy500_env.*"]),
        "rummy500_env.models",
    ],
    package_dir={"rummy500_env.models": "models"},
)
