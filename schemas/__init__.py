"""The JSON Schemas of the task-set format, shipped in the wheel as `taskpack.schemas`."""
