"""ONNX interop: import (backend) and export (frontend) of Doppio nets.

Kept free of imports so `import doppio.onnx` stays cheap; import
doppio.onnx.backend or doppio.onnx.frontend for the actual work.
"""
