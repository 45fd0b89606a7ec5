"""The errors of ONNX import.

All are RuntimeErrors, like every other failure the doppio package reports
(the runtime's C++ errors surface as RuntimeError too), so a caller can catch
one type; the subclasses tell a broken model from a valid one that Doppio
cannot express.
"""


class OnnxError(RuntimeError):
    """Base class of the errors raised by doppio.onnx."""


class InvalidModelError(OnnxError):
    """The model (or an input given for it) is malformed: undecodable bytes, a
    node reading a value nothing defines, an attribute of the wrong type, a
    tensor whose data does not match its shape or type."""


class UnsupportedError(OnnxError):
    """The model is valid ONNX but uses something Doppio cannot run: an
    operator, an attribute value, a data type or an opset."""


class RuntimeValueNeeded(UnsupportedError):
    """A node needs, at conversion time, the value of a graph input (e.g. the
    axes of Squeeze fed as an input). The backend then converts the model
    again once the input's value is known, on the first run; exporting such a
    model to fixed NetDefs fails with this error."""

    def __init__(self, message, input_name):
        super().__init__(message)
        self.input_name = input_name


class InvalidInputError(OnnxError):
    """An input given to run a prepared model is missing, unexpected, or of
    the wrong element type."""
