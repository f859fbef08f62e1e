# Compile-fail cases of the layers and models (model_cases.cpp; include()d
# from CMakeLists.txt beside this file, which defines typeflow_compile_fail).
# A model whose layers do not chain names both layers, the shape between
# them and what the second expects.
set(_s "typeflow::shape")
typeflow_compile_fail(model_chain model_cases.cpp TF_FAIL_model_chain
  "layer_shapes_do_not_chain<typeflow::layers::conv2d<4, 3, typeflow::layers::relu[^>]*>, ${_s}<-1, 6, 6, 4>, typeflow::layers::dense<10[^>]*>, typeflow::layers::expects::batch_features>")
typeflow_compile_fail(model_chain_first model_cases.cpp TF_FAIL_model_chain_first
  "layer_shapes_do_not_chain<typeflow::layers::input<float, 64>, ${_s}<-1, 64>, typeflow::layers::conv2d<4, 3[^>]*>, typeflow::layers::expects::batch_height_width_channels>")
typeflow_compile_fail(layer_input model_cases.cpp TF_FAIL_layer_input
  "layer_input_does_not_fit<typeflow::layers::layer<typeflow::fixed_string<15>{\"dense_on_image\"}, typeflow::layers::dense<3[^>]*> >, ${_s}<-1, 8, 8, 1>, typeflow::layers::expects::batch_features>")
typeflow_compile_fail(dense_units model_cases.cpp TF_FAIL_dense_units
  "static assertion failed: typeflow: layers::dense: the number of units must be positive")
typeflow_compile_fail(conv_filters model_cases.cpp TF_FAIL_conv_filters
  "static assertion failed: typeflow: layers::conv2d: filters and kernel size must be positive")
typeflow_compile_fail(pool_size model_cases.cpp TF_FAIL_pool_size
  "static assertion failed: typeflow: layers::max_pool2d / avg_pool2d: pool size and strides must be positive")
typeflow_compile_fail(model_empty model_cases.cpp TF_FAIL_model_empty
  "static assertion failed: typeflow: sequential: a model needs at least one layer")
typeflow_compile_fail(per_output_count model_cases.cpp TF_FAIL_per_output_count
  "static assertion failed: typeflow: compile: per_output gives a number of losses other than the model's outputs")
typeflow_compile_fail(output_count model_cases.cpp TF_FAIL_output_count
  "static assertion failed: typeflow: outputs: a model has 1 to 8 outputs")
