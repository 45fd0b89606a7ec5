
op_Load«out0"Load*
absolute_path*

add_prefix*
strip_prefix*
db*
dbs*
db_type*
keep_device*
load_all*
allow_incomplete*
source_blob_names