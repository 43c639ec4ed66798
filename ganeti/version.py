"""Version numbers of this package and of the Ganeti interfaces it speaks."""

# The release of this project.
PACKAGE_VERSION = "0.1.0"
