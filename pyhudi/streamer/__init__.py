"""The streamer. On Spark: reading the landing directory (source.py), telling good records from malformed
ones (validate.py, reasons.py), the error table (error_table.py) and the foreachBatch function that ties them
together (sink.py). In-process, without Spark: rounds over new files (local.py), read with pyarrow
(arrow_source.py, also `pyhudi write`'s reader). Both record their progress in the commits (commits.py).
The command itself is `pyhudi/cli/streamer_cmd.py`."""
