# Passed to llama.cpp's configure by tools/ggml_judge.py (-DCMAKE_PROJECT_INCLUDE=this file):
# build choices only, llama.cpp's sources and CMakeLists stay as shipped.
#
# test-backend-ops and test-llama-archs link llama-common (argument parsing, chat
# templates, the HTTP client of model downloads): half of the build's compile time, and
# code the judged programs only run at start-up. It is compiled without optimisation, and
# libllama (graph building, model load and save) at -O1. ggml (the CPU backend that
# computes the reference results, and ggml-cann) and the two test programs (their random
# weights and inputs: 20% of test-llama-archs's time at -O1) keep Release's -O3.
if(PROJECT_NAME STREQUAL "llama.cpp")
    function(pyaclnn_judge_opt_levels)
        foreach(target_level llama-common:-O0 cpp-httplib:-O0 llama:-O1)
            string(REPLACE ":" ";" pair "${target_level}")
            list(GET pair 0 target)
            list(GET pair 1 level)
            if(TARGET ${target})
                # after CMAKE_CXX_FLAGS_RELEASE's -O3 on the command line: the last -O wins
                target_compile_options(${target} PRIVATE ${level})
            endif()
        endforeach()
    endfunction()
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL pyaclnn_judge_opt_levels)
endif()
