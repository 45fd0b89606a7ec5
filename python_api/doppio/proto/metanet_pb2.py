"""Caffe2's metanet_pb2 (MetaNetDef and its maps): the messages live in
doppio.proto beside NetDef, so a MetaNetDef's nets are Doppio's NetDefs."""

from doppio.proto.doppio_pb2 import (  # noqa: F401
    BlobsMap, MetaNetDef, ModelInfo, NetsMap, PlansMap, StringMap)
