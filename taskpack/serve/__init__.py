"""`taskpack serve`: the application (`app`), the HTTP server it runs on (`server`), the lane
for work that grows with the data (`lane`, `jobs`), the ORS verbs (`ors`) and the viewer's
pages (`viewer`, `browsing`, `richtext`). Nothing is imported here: `taskpack.base.routes`, which
`taskpack.fetch` reads at episode start, stays apart."""
