pub mod onnx_check;
