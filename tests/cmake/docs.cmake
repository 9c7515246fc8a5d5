# The documentation's relative links (README.md, docs/**/*.md) name files inside the repository,
# and their #anchors name headings there.
add_test(NAME docs.relative_links_resolve
         COMMAND python3 scripts/check-doc-links.py
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.relative_links_resolve PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "relative links in [0-9]+ files, 0 broken")
# The checker finds what it must: a page with a missing file, a missing heading and a link out of
# the repository gives exactly those three (and not the code block, the web page or the good links).
add_test(NAME docs.broken_links_are_reported
         COMMAND sh -c "python3 scripts/check-doc-links.py tests/data/doc_links/broken.md; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.broken_links_are_reported PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "broken.md:5: 'no-such-file.md': no such file\ntests/data/doc_links/broken.md:6: '[.][.]/[.][.]/[.][.]/README.md#no-such-heading': no heading with anchor #no-such-heading in README.md\ntests/data/doc_links/broken.md:7: '[.][.]/[.][.]/[.][.]/[.][.]/elsewhere/DESIGN.md': outside the repository\n5 relative links in 1 files, 3 broken\nexit=1")
