# Helpers: one static library per source folder, and one unit-test binary per library.

# kvol_library(NAME SOURCES ... DEPS ...): DEPS are the only libraries the folder may use, as
# DESIGN.md's dependency table allows; a wrong include fails to link.
function(kvol_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# kvol_unit_test(NAME SOURCES ... DEPS ...): a gtest binary registered with ctest.
function(kvol_unit_test name)
  if(KVOL_FUZZ_BUILD)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name} --gtest_brief=1)
  set_tests_properties(${name} PROPERTIES LABELS unit)
endfunction()
