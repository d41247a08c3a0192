// serve/chat_page.h — the chat page `squeeze serve` answers at `/` (embedded, static).
#pragma once

namespace squeeze::serve {

const char* chat_page_html();

}  // namespace squeeze::serve
