"""The streamer's handling of bad input: reading the landing directory (source.py), telling good records
from malformed ones (validate.py, reasons.py), the error table (error_table.py) and the foreachBatch
function that ties them together (sink.py). The command itself is `pyhudi/cli/streamer_cmd.py`."""
