
op_FileStoreHandlerCreate4out0"FileStoreHandlerCreate*
path*

prefix