"""An installed wheel's copy of the checkout's data folders (fixtures/, cases/, docker/).

pyproject.toml maps those folders here as package data; pcgkit.resources reads them from here only
when there is no checkout around the package. In a checkout this package is empty.
"""
