"""Package discovery for the layout in pyproject.toml (all other metadata lives there).

``hbeval_core`` (the small core) and ``hbeval`` (the product) are found with every subpackage;
each folder ``adapters/<framework>`` with an ``__init__.py`` is the package
``hbeval_<framework>``, with its subpackages. Nothing is listed by hand, so a new subpackage or
adapter cannot be left out of the wheel.
"""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent

packages = find_packages(include=["hbeval", "hbeval.*", "hbeval_core", "hbeval_core.*"])
package_dir: dict[str, str] = {}
for folder in sorted((HERE / "adapters").iterdir()):
    if (folder / "__init__.py").is_file():
        name = f"hbeval_{folder.name}"
        package_dir[name] = f"adapters/{folder.name}"
        packages += [name, *(f"{name}.{sub}" for sub in find_packages(str(folder)))]

setup(packages=packages, package_dir=package_dir)
