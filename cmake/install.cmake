# `cmake --install BUILD [--prefix DIR]` and `cpack -G DEB` (run in the build folder).
#   bin/rsim
#   share/rsim/hardware/        the platform catalog (found relative to bin/rsim)
#   share/rsim/models/          the model zoo (`model: NAME` in any scenario)
#   share/rsim/scenarios/       the example scenarios, their Lua plugins and README
#   share/rsim/python/rsim_torch/  probe and measure through PyTorch (python3 -m rsim_torch; rsim --backend torch)
#   share/man/man1/rsim.1.gz    the manual page
#   share/bash-completion/completions/rsim
#   share/doc/rsim/             README.md and its docs/ pages
include(GNUInstallDirs)

install(TARGETS rsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY hardware/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rsim/hardware FILES_MATCHING PATTERN "*.yaml" PATTERN "README.md")
install(DIRECTORY scenarios/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rsim/models FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY scenarios/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rsim/scenarios
        FILES_MATCHING PATTERN "*.yaml" PATTERN "*.lua" PATTERN "README.md"
        PATTERN "models" EXCLUDE)
install(DIRECTORY python/rsim_torch DESTINATION ${CMAKE_INSTALL_DATADIR}/rsim/python FILES_MATCHING PATTERN "*.py")
install(FILES dist/rsim.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME rsim)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# the reference pages the README links (docs/*.md; the figures stay in the repository)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md" PATTERN "images" EXCLUDE PATTERN "gallery" EXCLUDE)

# The manual page, compressed as Debian policy wants it (gzip -n: no timestamp, reproducible).
find_program(RSIM_GZIP gzip REQUIRED)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/rsim.1.gz
                   COMMAND ${RSIM_GZIP} -9nc ${PROJECT_SOURCE_DIR}/dist/rsim.1 > ${CMAKE_BINARY_DIR}/rsim.1.gz
                   DEPENDS ${PROJECT_SOURCE_DIR}/dist/rsim.1 VERBATIM)
add_custom_target(rsim_man ALL DEPENDS ${CMAKE_BINARY_DIR}/rsim.1.gz)
install(FILES ${CMAKE_BINARY_DIR}/rsim.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The Debian package: `cd build && cpack -G DEB` writes rsim_<version>_<arch>.deb. Its Depends
# line comes from the shared libraries the binary links (dpkg-shlibdeps, package dpkg-dev).
set(CPACK_PACKAGE_NAME rsim)
set(CPACK_PACKAGE_VENDOR "rsim developers")
set(CPACK_PACKAGE_CONTACT "rsim developers <rsim@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "roofline simulator for neural networks on CPUs and GPUs")
set(CPACK_PACKAGE_DESCRIPTION "rsim evaluates YAML scenarios: per-layer FLOPs, MACs, bytes moved,
arithmetic intensity, attainable performance and bound time on a catalog of
platforms, swept over parameters, with roofline and trend figures.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# the figures are set in DejaVu Sans (plots/cairo_renderer.cpp); shlibdeps adds the libraries
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fonts-dejavu-core")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${PROJECT_HOMEPAGE_URL}")
set(CPACK_GENERATOR DEB)
include(CPack)
