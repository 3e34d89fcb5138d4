"""GF-01-R1 in the browser (``gf01 serve``): the side-scroller renderer for human play, pilots and replay.

:mod:`.games` holds the episodes (the hidden state stays there), :mod:`.pilot` reads pilot files, :mod:`.app` is
the HTTP skin (Starlette routes over plain async functions, security headers), :mod:`.server` runs it on uvicorn,
and ``static/`` holds the page's HTML, CSS and JavaScript, served from the package (no build step, no CDN).
docs/browser.md describes it.
"""
