"""One module per format, each declaring `FORMAT` (`converters._format.Format`): the package
finds them by name here, and the import contracts hold every module here apart from the others.
What two formats share is a helper module of `taskpack.converters`."""
