include(CMakePackageConfigHelpers)

install(TARGETS braid nccl EXPORT BraidTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/braid DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} OPTIONAL)
install(EXPORT BraidTargets NAMESPACE Braid:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)

configure_package_config_file(cmake/BraidConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/BraidConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/BraidConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/BraidConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/BraidConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)

configure_file(cmake/braid.pc.in ${CMAKE_CURRENT_BINARY_DIR}/braid.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/braid.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
