
op_Savet
in0out0"Save*
absolute_path*
strip_prefix*
blob_name_overrides*
db*
db_type*

chunk_size:in0