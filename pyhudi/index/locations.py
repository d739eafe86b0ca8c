"""Column names of a tagged record's location (shared by every engine's index lookup)."""

RECORD_KEY = "_hoodie_record_key"
PARTITION = "_hoodie_partition_path"
LOC_FILE_ID = "_pyhudi_loc_file_id"
LOC_INSTANT = "_pyhudi_loc_instant"
LOC_PARTITION = "_pyhudi_loc_partition"
DELETE_FLAG = "_pyhudi_delete"
